"""The mock engine the offline synth and the tests run the program under: program.py runs __main__.py and records
every registration; engine.py models the Pulumi engine's step generation against an earlier state; providers.py
answers as each provider does (ids, outputs, replacements); sdk.py is the one place that reaches into the Pulumi
Python SDK's internals. Not a user command: the commands are tools/*.py beside this package."""
