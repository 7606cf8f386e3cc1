/* The agent bundle's entry point (docs/containers.md, "The agent bundle").
 *
 * A static program (no loader, no library): it runs whatever the container's
 * distribution and glibc are. The SPANK plugin makes it the task's program as
 * /proc/self/fd/N/elasticrun, N an O_PATH descriptor of the bundle directory
 * that slurmstepd opened on the host before the container plugin (pyxis)
 * entered the image's mount namespace; /proc/self/fd/N is a magic link, so
 * the path reaches the host's bundle from inside any mount namespace.
 *
 * It runs the real elasticrun with the bundle's own loader and libraries:
 *   DIR/ld-linux-x86-64.so.2 --library-path DIR/lib DIR/bin/elasticrun ARGS...
 * (DIR = dirname(argv[0])). The explicit loader means the image's glibc and
 * libraries are never used by elasticrun, and no LD_LIBRARY_PATH reaches the
 * workers, which exec the image's python normally.
 *
 * Slurm < 23.11 replaces the task's argv[0] with this program, >= 23.11 puts
 * it in front: either way argv[1..] go to elasticrun unchanged. Kept in C and
 * free of any library beyond libc's static startup, so it has nothing to
 * resolve. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef ELASTIC_BUNDLE_LOADER
#define ELASTIC_BUNDLE_LOADER "ld-linux-x86-64.so.2"
#endif

static char* Join(const char* dir, const char* name) {
  size_t n = strlen(dir) + 1 + strlen(name) + 1;
  char* out = malloc(n);
  if (out != NULL) snprintf(out, n, "%s/%s", dir, name);
  return out;
}

int main(int argc, char** argv) {
  if (argc < 1 || argv[0] == NULL || strchr(argv[0], '/') == NULL) {
    fprintf(stderr, "elasticrun (agent bundle): started without a path in argv[0]\n");
    return 2;
  }
  char* dir = strdup(argv[0]);
  char** args = calloc((size_t)argc + 4, sizeof(char*));
  if (dir == NULL || args == NULL) return 2;
  *strrchr(dir, '/') = '\0';
  char* loader = Join(dir, ELASTIC_BUNDLE_LOADER);
  char* lib = Join(dir, "lib");
  char* program = Join(dir, "bin/elasticrun");
  if (loader == NULL || lib == NULL || program == NULL) return 2;
  args[0] = loader;
  args[1] = "--library-path";
  args[2] = lib;
  args[3] = program;
  for (int i = 1; i < argc; ++i) args[3 + i] = argv[i];
  execv(loader, args);
  fprintf(stderr, "elasticrun (agent bundle): cannot run the bundle's loader %s: %s\n", loader,
          strerror(errno));
  return 2;  /* elasticrun's "bad configuration, do not requeue" */
}
