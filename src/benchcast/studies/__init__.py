"""Studies built on benchcast: the bundled example workflow, the Krajewski et al. 2025 reproduction,
bench presets for the Apple data, and the legacy law choice kept to measure against."""
