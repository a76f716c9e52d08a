"""Small helpers: config checks, training precision, optimizer options, flush-to-zero, and
returning freed heap memory to the OS."""
