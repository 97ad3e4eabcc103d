"""Finding: hybrid search (BM25 and vectors fused), LLM reranking, and the evaluation and
tuning of both on gold queries."""
