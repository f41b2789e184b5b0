"""The layer every other package builds on: the records that flow through a run (``records``),
a candidate's bookkeeping (``candidates``) and the question mix (``mix``)."""
