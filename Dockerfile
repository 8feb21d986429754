# graphsvc server image (used by docker-compose.yml).
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY graphsvc ./graphsvc
COPY cypher ./cypher
RUN pip install --no-cache-dir . && useradd --create-home graphsvc
USER graphsvc
ENV GRAPHSVC_DATA_DIR=/home/graphsvc/data
EXPOSE 8000
CMD ["graphsvc", "serve", "--host", "0.0.0.0", "--port", "8000"]
