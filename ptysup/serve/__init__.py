"""`ptysup serve`: a local, read-only web page of the runs in a directory.

security  the token, its cookie, the Host check and the response headers
files     serve's guards on a run's files: only regular files within a size are read
damage    what is wrong with a run's files, said before the store's readers read them
reads     reads in the background: an answer never waits long, unchanged runs not reread
labels    what the page calls a run's state: an ended run by its outcome, as `runs` does
api       the runs as JSON: the table's rows, one run's decisions, its recording
batches   the batches as JSON, each state file looked at before it is read
joined    a recording's parts scanned, and joined for replay
stream    a run's recording tailed as server-sent events for the live player
assets    the page's static files, the vendored player checked against its manifest
routes    which request gets which answer
reception the waiting room: connections until their request's head is whole, one thread
server    the HTTP server: the token judged on the head, a thread per request let in
cli       `ptysup serve [DIR] [--host H] [--port P]`

It may import store (the runs and their rows), terminal (the recording's reader) and the
shared modules, never the run or the command line: it only reads.
"""
