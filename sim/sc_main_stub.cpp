// libsystemc ships a main() that calls sc_main(). xpusim executables bring their own main()
// (argument parsing, exit codes, error reporting), so sc_main exists only to satisfy the
// library and is never called. Visible by default, so that libsystemc finds it in the Python
// module too (pybind11 builds modules with hidden symbols).
extern "C" __attribute__((visibility("default"))) int sc_main(int, char*[]) { return 0; }
