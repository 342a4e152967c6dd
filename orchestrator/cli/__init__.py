"""The ``ringleader`` command: :mod:`.main` parses and dispatches; one module per command group
(:mod:`.run`, :mod:`.approvals`, :mod:`.serve`, …) holds its arguments and its body. A surface:
the library never imports it."""
