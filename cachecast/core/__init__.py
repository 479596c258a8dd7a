"""The small core every layer stands on: the error tree, database plumbing, dates as clients
write them, size limits, provider names, the garbage collector's pacing, and the list of modules
that declare tables. It imports nothing else of ours."""
