"""What people use around the tables: `inspect_dump`, `fetch` (KIP-709 offset fetch), `fence`
(KIP-848/KIP-1251 fencing), `notebook_queries`, `generate` (synthetic dumps), `bench`."""
