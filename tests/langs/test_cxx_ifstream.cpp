// test_cxx_ifstream.cpp — a file read with std::ifstream on every node of
// a C++ program built with dsmc++ (issue 89). libstdc++'s filebuf takes its
// buffer from operator new, which is shared memory under dsmcc
// (src/start/wrap_new.c), and calls read(2) into it: on a node where that
// page is not writable the kernel's copy failed with EFAULT, and the stream
// read nothing, silently (good 0, gcount 0). Each thread reads the file
// main wrote, twice: through getline (the stream's buffer) and with read()
// into a block main allocated and filled (a page another node holds); and
// writes a file of its own with std::ofstream from shared memory, which
// main reads back; and reads the file with getline(3) into a buffer of
// malloc's (shared), which getline grows. Exits non-zero naming what
// failed.
#include <omp.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

static std::string line_of(int i) { return "line " + std::to_string(i) + " of the file read on every node"; }

int main()
{
    const int lines = 2000;
    char path[] = "/tmp/dsm_ifstream.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return perror("mkstemp"), 1;
    close(fd);
    std::string all;
    {
        std::ofstream out(path);
        for (int i = 0; i < lines; i++) {
            out << line_of(i) << '\n';
            all += line_of(i) + '\n';
        }
    }
    const int nt = omp_get_max_threads();
    std::vector<std::vector<char>> blocks(nt, std::vector<char>(all.size(), '?')); // main's pages
    std::vector<int> bad_lines(nt), bad_read(nt), bad_write(nt), bad_getline(nt);
#pragma omp parallel num_threads(nt)
    {
        int t = omp_get_thread_num();
        std::ifstream in(path);
        std::string line;
        int n = 0;
        while (std::getline(in, line))
            bad_lines[t] += line != line_of(n++);
        bad_lines[t] += n != lines;
        std::ifstream again(path, std::ios::binary);
        again.read(blocks[t].data(), (std::streamsize)all.size());
        bad_read[t] = !again || again.gcount() != (std::streamsize)all.size() ||
                      std::string(blocks[t].begin(), blocks[t].end()) != all;
        std::string mine = std::string(path) + "." + std::to_string(t);
        std::ofstream out(mine, std::ios::binary);
        out.write(blocks[t].data(), (std::streamsize)blocks[t].size());
        out.close();
        bad_write[t] = !out;
        FILE *f = std::fopen(path, "r");
        size_t cap = 8;
        char *buf = static_cast<char *>(std::malloc(cap));
        int k = 0;
        while (f && getline(&buf, &cap, f) > 0)
            bad_getline[t] += std::string(buf) != line_of(k++) + '\n';
        bad_getline[t] += k != lines;
        std::free(buf);
        if (f)
            std::fclose(f);
    }
    int fails = 0;
    for (int t = 0; t < nt; t++) {
        std::string mine = std::string(path) + "." + std::to_string(t);
        std::ifstream back(mine, std::ios::binary);
        std::string got((std::istreambuf_iterator<char>(back)), std::istreambuf_iterator<char>());
        bad_write[t] += got != all;
        std::remove(mine.c_str());
        if (bad_lines[t] || bad_read[t] || bad_write[t] || bad_getline[t]) {
            std::printf("thread %d: std::getline %d wrong, read %s, ofstream %s, getline(3) %d wrong\n", t,
                        bad_lines[t], bad_read[t] ? "wrong" : "right", bad_write[t] ? "wrong" : "right",
                        bad_getline[t]);
            fails++;
        }
    }
    std::remove(path);
    if (fails)
        return 1;
    std::printf("c++ ifstream: ok on %d threads\n", nt);
    return 0;
}
