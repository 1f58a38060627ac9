"""One run of the job: options and profiles (`config`), the Spark session (`session`, the only
place one is built), and `run`, the pipeline as named steps. Sits on `engine` and `io`."""
