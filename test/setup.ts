// Test-wide setup: keep tests offline and quiet.
process.env.AI4RAG_LOG_LEVEL ??= 'silent';
