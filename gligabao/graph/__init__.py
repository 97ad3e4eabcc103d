"""Reading the graph back: facts as of a time with their evidence, entities and their
timelines, and the whole memory exported."""
