"""The market source: v1 and v2 payloads, taxonomy, the server, the client, the Cloudflare and Olares-app exports."""
