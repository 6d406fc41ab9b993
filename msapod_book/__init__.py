"""The book's kit: what its pages print and draw, on top of the ``msapod`` library.

* :mod:`.pages` -- what a page prints beside a claim: its reading, its replicates, labelled
  comparisons and the scorecard's tables, read from the shipped curve;
* :mod:`.prose` -- the method pages' sentences and tables from a live check or a shipped
  study;
* :mod:`.figures` -- the pages' longer figures;
* :mod:`.plots` -- the book's figures and tables in msapod's style.

None decides a claim: numbers come from ``msapod`` and its shipped results, verdicts and
their words from :mod:`msapod.studies.verdict`. A page's hidden cell holds imports and
single calls of this kit. ``msapod`` never imports it.
"""
