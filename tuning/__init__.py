"""Runtime adjustments of the Python process that evaluates the program (not components: they declare nothing):
the SDK's dependency cycle check answered without a walk where construction order proves there is no cycle
(cycle_check), and the cyclic garbage collector's thresholds (gc_thresholds). __main__.py installs both before the
first resource; each checks at run time that it meets what it was written for and otherwise leaves the process as
the SDK and Python set it."""
