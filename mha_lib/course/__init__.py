"""The course's machinery, on top of the core: the tasks and models the
chapters train, training many seeds at once, the stored results and their
replication, what a chapter reports to the book, its figures, the pretrained
model, the treebank and the text model. The core (the modules of ``mha_lib``
itself) imports nothing from here.
"""
