# agent-loop-guard worker image: `docker build -t agent-loop-guard-worker .`
# Runs `npm run worker` (tsx demo/worker.ts). Configure with the env vars in worker/env.ts.

FROM node:22-bookworm-slim AS deps
WORKDIR /app
# No toolchain: nothing is compiled at install (SQLite is Node's built-in node:sqlite; the other
# native parts ship Node-API binaries in registry packages). node:22 is 22.13 or newer.
COPY package.json package-lock.json ./
# Everything, devDependencies included: the image runs the TypeScript sources through tsx, and
# the optional peers it uses (pg for the compose ledger, the LLM SDKs, the MCP SDK, the
# OpenTelemetry packages) are devDependencies of the repository, not dependencies of the package.
RUN npm ci --no-audit --no-fund

FROM node:22-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates tini \
 && rm -rf /var/lib/apt/lists/*
COPY --from=deps /app/node_modules ./node_modules
# Source (tests, docs, local tools and data are excluded by .dockerignore).
COPY . .
RUN mkdir -p /app/data && chown node:node /app/data
USER node
# tini forwards SIGTERM so the worker can drain (Worker.shutdown) on `docker compose stop`.
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["npm", "run", "worker"]
