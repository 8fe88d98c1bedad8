# agent-jobs worker image: the agentRun workflow, Claude calls and bash sessions.
# Build: docker build -t agent-jobs .   Run: see docker-compose.yml.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
# Tools agents commonly reach for inside their bash sessions.
RUN apt-get update \
 && apt-get install -y --no-install-recommends acl bash ca-certificates git python3 procps curl bubblewrap=0.8.0-2+deb12u1 slirp4netns=1.2.0-1 nftables=1.0.6-2+deb12u2 iproute2=6.1.0-3 \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY bin ./bin
COPY examples ./examples
# Sessions run as the agent-jobs user inside bwrap (src/session/README.md);
# the worker runs as root to switch to it. bwrap creates namespaces, which
# Docker's defaults forbid: run the container with cap_add SYS_ADMIN and
# security_opt apparmor=unconfined, systempaths=unconfined (docker-compose.yml
# does), or the worker refuses to start; AGENT_JOBS_SANDBOX=none runs it
# without the sandbox knowingly (docs/deploy.md, "Docker").
RUN useradd --system --no-create-home --shell /usr/sbin/nologin agent-jobs
ENV NODE_ENV=production \
    AGENT_JOBS_DATA_DIR=/data
VOLUME ["/data"]
ENTRYPOINT ["node", "bin/agent-jobs.js"]
CMD ["worker"]
