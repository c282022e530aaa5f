#!/usr/bin/env python3
"""The CDK app: `python app.py` (or `npx aws-cdk@2 synth`) synthesises agentmem's two stacks into cdk.out.

Offline: no AWS account, credentials or network. The dependency layer must be built first
(`make layers`); see docs/deploying.md.
"""

from __future__ import annotations

import os
import sys

from infra.config import InfraConfigError


def main() -> int:
    try:
        from infra.application import build_app

        app, stateful, stateless = build_app()
        assembly = app.synth()
    except InfraConfigError as error:
        print(f"agentmem: cannot synthesise: {error}", file=sys.stderr)
        return 2
    if not os.environ.get("CDK_OUTDIR"):  # run by hand rather than by the CDK CLI
        print(f"synthesised {stateful.stack_name} and {stateless.stack_name} into {assembly.directory}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
