"""The fitting engine, one module per stage of a fit: the problem and its loss
(:mod:`.problem`, :mod:`.loss`), the batched solver (:mod:`.solver`), the starts and the
projection of linear parameters (:mod:`.starts`, :mod:`.projection`), the search that makes a fit
of them (:mod:`.search`) and the refit of bootstrap replicates (:mod:`.replicates`)."""
