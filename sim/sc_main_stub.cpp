// libsystemc ships a main() that calls sc_main(). xpusim executables bring their own main()
// (argument parsing, exit codes, error reporting), so sc_main exists only to satisfy the
// library and is never called.
extern "C" int sc_main(int, char*[]) { return 0; }
