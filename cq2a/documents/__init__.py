"""Documents in: text, Markdown, HTML and PDF files read one at a time, cut into passages that
end on sentence boundaries, each passage a ``Context`` that remembers its file, page and offsets.
"""
