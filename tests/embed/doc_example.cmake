# The example in doc/embedding.md is doc/examples/embed.cpp, verbatim (which ctest
# builds and runs): fails when one changes without the other.
#   cmake -DDOC=doc/embedding.md -DSRC=doc/examples/embed.cpp -P tests/embed/doc_example.cmake
file(READ "${DOC}" _doc)
file(READ "${SRC}" _src)
string(FIND "${_doc}" "${_src}" _at)
if(_at EQUAL -1)
  message(FATAL_ERROR "${DOC}: its example differs from ${SRC}; copy the file into the page")
endif()
