"""The pipeline: the stages and machinery that commands are built from (evaluate, sample, gate,
beyond, outputs, plan, pages), between the commands above and the engines and views below."""
