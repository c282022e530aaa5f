"""The CDK app's building blocks: ``infra.stacks`` composes ``infra.constructs``.

This package's ``__init__`` files import nothing from the CDK, so that pure-Python parts
(the summary state machine's ASL, the table schema, the layer checks) load without jsii.
"""
