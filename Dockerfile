# agentmem on the embedded backend in a container: `docker build -t agentmem .` then
# `docker run -p 8787:8787 -e AGENTMEM_API_KEY=... -v agentmem-data:/data agentmem`.
# Two stages: the first builds the wheels (the project's and every dependency's), the second installs them alone,
# with no compiler, no pip cache and no source tree.

ARG PYTHON_VERSION=3.11

FROM python:${PYTHON_VERSION}-slim AS build
WORKDIR /src
COPY pyproject.toml README.md LICENSE CHANGELOG.md MANIFEST.in ./
COPY layers/core/python/agentmem ./layers/core/python/agentmem
RUN python -m pip wheel --no-cache-dir --wheel-dir /wheels ".[embedded]" \
    && ls /wheels/*.whl > /wheels/requirements.txt

FROM python:${PYTHON_VERSION}-slim
LABEL org.opencontainers.image.title="agentmem" \
      org.opencontainers.image.description="Memory for AI agents, on the embedded backend (SQLite and files)" \
      org.opencontainers.image.licenses="Apache-2.0"
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    python -m pip install --no-cache-dir --no-index --requirement /wheels/requirements.txt \
    && groupadd --gid 10001 agentmem \
    && useradd --uid 10001 --gid 10001 --home-dir /data --no-create-home --shell /usr/sbin/nologin agentmem \
    && mkdir -p /data && chown 10001:10001 /data && chmod 0700 /data
# the data (memories, entries, conversations, files, keys) lives in /data: mount a volume there to keep it
ENV AGENTMEM_DATA_DIR=/data \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
VOLUME ["/data"]
WORKDIR /data
USER 10001:10001
EXPOSE 8787
# /v1/health needs no key; python is there already (no curl in the image)
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8787/v1/health', timeout=4).status != 200)"]
# the default account's key comes from AGENTMEM_API_KEY (-e AGENTMEM_API_KEY=...); without it the first start
# makes one, prints it once and writes it to /data/dev-key
ENTRYPOINT ["agentmem"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8787"]
