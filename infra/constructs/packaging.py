"""How the Lambda code is packaged, with no Docker.

- the agentmem package is its own layer (``layers/core`` → ``/opt/python/agentmem``), compiled to
  hash-checked bytecode while it is staged: Lambda's ``/opt`` is read-only, so a layer without
  bytecode is compiled again on every cold start, and timestamp-checked bytecode would not survive
  the asset zip (its file times are normalised);
- the third-party dependencies are a second layer, built by ``layers/deps/build.sh`` (pip with the
  Lambda platform's wheels), which compiles them the same way;
- every function has these two and no other: the MCP function too, since ``/v1/mcp`` speaks MCP itself
  (``agentmem.mcp_server.protocol``) and the ``mcp`` SDK is only the local stdio server's;
- each function's code is its own folder, ``functions/<name>/``.
"""

from __future__ import annotations

from pathlib import Path

import jsii
from aws_cdk import Annotations, AssetHashType, BundlingOptions, DockerImage, IgnoreMode, ILocalBundling, RemovalPolicy
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from ..config import (
    CORE_LAYER_DIR,
    DEPS_MARKER,
    FUNCTIONS_DIR,
    LAMBDA_PYTHON,
    DeploymentConfig,
    resolve_deps_layer_dir,
)
from ..layer_build import runtime_python, stage_package_layer

RUNTIME: lambda_.Runtime = getattr(lambda_.Runtime, "PYTHON_" + LAMBDA_PYTHON.replace(".", "_"))
CORE_EXCLUDE = ["**/__pycache__", "**/*.pyc", "python/*.egg-info", "python/*.egg-info/**"]
# the recipe beside the built python/ folder (gitignore syntax: "/" anchors at the folder's root), and the
# build marker, which only synthesis reads
DEPS_EXCLUDE = ["/build.sh", "/*.txt", "/*.md", "/.gitignore", f"/python/{DEPS_MARKER}"]
FUNCTION_EXCLUDE = ["**/__pycache__", "**/*.pyc", "tests", "tests/**"]


def lambda_architecture(config: DeploymentConfig) -> lambda_.Architecture:
    return lambda_.Architecture.ARM_64 if config.architecture == "arm64" else lambda_.Architecture.X86_64


@jsii.implements(ILocalBundling)
class CompiledPackageBundler:
    """Local bundling: copy ``python/`` without caches, then compile it with hash-checked .pyc files."""

    def __init__(self, source: Path) -> None:
        self.source = source

    def try_bundle(self, output_dir: str, *_options: object, **_keywords: object) -> bool:
        stage_package_layer(self.source, Path(output_dir))
        return True


def function_code(name: str) -> lambda_.Code:
    folder = FUNCTIONS_DIR / name
    if not folder.is_dir():
        raise FileNotFoundError(f"no function folder {folder}")
    return lambda_.Code.from_asset(str(folder), exclude=FUNCTION_EXCLUDE)


class Layers(Construct):
    """The two layers every function uses: the agentmem package and its dependencies."""

    def __init__(self, scope: Construct, construct_id: str, *, config: DeploymentConfig) -> None:
        super().__init__(scope, construct_id)
        self.architecture = lambda_architecture(config)
        # first: a missing or stale layer stops synthesis before any bundling
        deps_folder = resolve_deps_layer_dir(config)
        self.core = self._build_core_layer()
        self.deps = self._build_deps_layer(config, deps_folder)

    @property
    def all(self) -> list[lambda_.ILayerVersion]:
        """What every function has."""
        return [self.core, self.deps]

    def _build_core_layer(self) -> lambda_.LayerVersion:
        code = lambda_.Code.from_asset(
            str(CORE_LAYER_DIR),
            exclude=CORE_EXCLUDE,
            asset_hash_type=AssetHashType.SOURCE,
            bundling=BundlingOptions(
                image=DockerImage.from_registry("agentmem/local-bundling-only"),  # never pulled: local wins
                local=CompiledPackageBundler(CORE_LAYER_DIR),
            ),
        )
        layer = lambda_.LayerVersion(
            self, "Core", code=code, description="agentmem: the package itself (/opt/python/agentmem)",
            compatible_runtimes=[RUNTIME], compatible_architectures=[self.architecture],
            removal_policy=RemovalPolicy.DESTROY,
        )
        if runtime_python() is None:
            Annotations.of(layer).add_info(
                f"no Python {LAMBDA_PYTHON} here to compile the package layer: it holds source only, and each cold "
                f"start compiles the modules it imports (install Python {LAMBDA_PYTHON} or set RUNTIME_PYTHON)"
            )
        return layer

    def _build_deps_layer(self, config: DeploymentConfig, folder: Path) -> lambda_.LayerVersion:
        return lambda_.LayerVersion(
            self, "Deps", code=lambda_.Code.from_asset(str(folder), exclude=DEPS_EXCLUDE, ignore_mode=IgnoreMode.GIT),
            description=f"agentmem: third-party dependencies for Python {LAMBDA_PYTHON} on {config.architecture}",
            compatible_runtimes=[RUNTIME], compatible_architectures=[self.architecture],
            removal_policy=RemovalPolicy.DESTROY,
        )
