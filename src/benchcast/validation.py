"""Checks of user arguments at the API boundary."""
