# This market source as an image, its catalogue baked in (see docs/how-to/host-on-device.md):
#   make && docker build -t REGISTRY/olares-market:VERSION . && docker push REGISTRY/olares-market:VERSION
# The base is pinned by tag here: pin it by digest in your fork (docker buildx imagetools inspect).
FROM python:3.11-slim-bookworm
WORKDIR /opt/olares-pack
COPY pyproject.toml README.md ./
COPY olares_pack ./olares_pack
COPY templates ./templates
RUN pip install --no-cache-dir . && rm -rf /opt/olares-pack
# What the server reads: the ledger, the market's offer decisions (market-offer.json), the packages
# it lists, the icons under apps/<name>/, and the v2 taxonomy (market.yaml) when there is one (the
# [n] and [l] let the copy go on without them).
COPY market-index.json market-offer.jso[n] market.yam[l] /srv/market/
COPY packages /srv/market/packages
COPY apps /srv/market/apps
USER 1000
EXPOSE 8080
ENTRYPOINT ["olares-pack"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8080", "--root", "/srv/market"]
