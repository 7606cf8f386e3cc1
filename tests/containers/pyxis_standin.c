/* pyxis_standin.so: a test-only SPANK plugin that puts a task into a container
 * image the way NVIDIA pyxis + enroot do, for the container tests of
 * slurm-elastic (pyxis and enroot are not packaged in Debian). Written from
 * reading their sources; none of their code is here. Each step names the
 * behaviour it reproduces and where it comes from:
 *
 *  options --container-image=ROOTFS (a directory, not a registry image),
 *  --container-mounts=SRC:DST[,...], --container-workdir=PATH: pyxis's option
 *  names (pyxis_slurmstepd.c, spank_opts).
 *
 *  user_init (slurmstepd, on the host): pyxis starts the container with enroot
 *  and copies the container's environment over the job's
 *  (pyxis_slurmstepd.c, enroot_container_start/spank_import_container_env).
 *  Here: ROOTFS/etc/environment, enroot's default PATH, PYTORCH_VERSION as an
 *  NGC PyTorch image's ENV has it, and the variables enroot's PyTorch hook adds
 *  (enroot conf/hooks/extra/50-slurm-pytorch.sh): MASTER_ADDR (the step's first
 *  node), MASTER_PORT = 61000 + job id % 4536, WORLD_SIZE = SLURM_NTASKS,
 *  OMP_NUM_THREADS=1 when the step has more tasks than nodes. A missing image
 *  is reported in task_init_privileged, as pyxis postpones user_init's errors.
 *
 *  task_init_privileged (the task's process, root, before slurmstepd resolves
 *  the program): pyxis before 0.10.0 joined the container's mount namespace
 *  there (pyxis_slurmstepd.c, slurm_spank_task_init_privileged: setns(CLONE_NEWNS)
 *  and chdir); 0.10.0 and later do it in task_init (commit 05c61ae), after
 *  every plugin's task_init_privileged. The stand-in keeps the earlier one:
 *  what slurm-elastic must do on the host (the host runner) is then proven to
 *  happen before either. enroot made that namespace (enroot src/runtime.sh,
 *  runtime_start; src/mount.sh): the image's rootfs writable (an overlay on a
 *  tmpfs here), /proc, /sys and /dev, a fresh tmpfs on /run (hiding the host's
 *  munge socket), /tmp bind-mounted (pyxis's static mount entry "/tmp /tmp"),
 *  the --container-mounts, then pivot_root. So every later plugin's task_init
 *  and the exec of the task run inside the image.
 *
 *  task_init: pyxis sets RANK=SLURM_PROCID and LOCAL_RANK=SLURM_LOCALID for
 *  images with PYTORCH_VERSION (pyxis_slurmstepd.c, pytorch_setup).
 *  Not reproduced: the user namespace and root remapping (the test cluster runs
 *  jobs as root), seccomp, image import and squashfs. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <slurm/spank.h>

SPANK_PLUGIN(pyxis_standin, 1)

static char image[4096];
static char mounts[8192];
static char workdir[4096];
static char error[8192];

static int OnImage(int val, const char* arg, int remote) {
  (void)val, (void)remote;
  snprintf(image, sizeof(image), "%s", arg ? arg : "");
  return 0;
}
static int OnMounts(int val, const char* arg, int remote) {
  (void)val, (void)remote;
  snprintf(mounts, sizeof(mounts), "%s", arg ? arg : "");
  return 0;
}
static int OnWorkdir(int val, const char* arg, int remote) {
  (void)val, (void)remote;
  snprintf(workdir, sizeof(workdir), "%s", arg ? arg : "");
  return 0;
}

static struct spank_option options[] = {
    {"container-image", "ROOTFS", "[pyxis-standin] the image: a root filesystem directory", 1, 0, OnImage},
    {"container-mounts", "SRC:DST[,...]", "[pyxis-standin] bind mounts into the container", 1, 0, OnMounts},
    {"container-workdir", "PATH", "[pyxis-standin] working directory inside the container", 1, 0, OnWorkdir},
    SPANK_OPTIONS_TABLE_END};

int slurm_spank_init(spank_t sp, int ac, char** av) {
  (void)ac, (void)av;
  if (spank_context() != S_CTX_LOCAL && spank_context() != S_CTX_REMOTE) return 0;
  for (int i = 0; options[i].name != NULL; ++i) {
    if (spank_option_register(sp, &options[i]) != ESPANK_SUCCESS) return -1;
  }
  return 0;
}

static void Set(spank_t sp, const char* name, const char* value) {
  spank_setenv(sp, name, value, 1);
}

static long EnvLong(spank_t sp, const char* name, long fallback) {
  char buf[64];
  if (spank_getenv(sp, name, buf, sizeof(buf)) != ESPANK_SUCCESS) return fallback;
  return strtol(buf, NULL, 10);
}

int slurm_spank_user_init(spank_t sp, int ac, char** av) {
  (void)ac, (void)av;
  if (!spank_remote(sp) || image[0] == '\0') return 0;
  char path[4200];
  struct stat st;
  snprintf(path, sizeof(path), "%s/usr", image);
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
    snprintf(error, sizeof(error), "pyxis-standin: image '%s' is not a root filesystem: %s", image,
             strerror(errno ? errno : ENOTDIR));
    return 0;
  }
  Set(sp, "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  snprintf(path, sizeof(path), "%s/etc/environment", image);
  FILE* f = fopen(path, "r");
  if (f != NULL) {
    char line[4096];
    while (fgets(line, sizeof(line), f) != NULL) {
      line[strcspn(line, "\n")] = '\0';
      char* eq = strchr(line, '=');
      if (line[0] == '#' || eq == NULL) continue;
      *eq = '\0';
      Set(sp, line, eq + 1);
    }
    fclose(f);
  }
  Set(sp, "PYTORCH_VERSION", "standin");
  char value[4096];
  if (spank_getenv(sp, "SLURM_STEP_NODELIST", value, sizeof(value)) == ESPANK_SUCCESS) {
    value[strcspn(value, ",")] = '\0';
    char* bracket = strchr(value, '[');  /* "n[1-3]" -> "n1", as scontrol show hostname | head -n1 */
    if (bracket != NULL) {
      size_t digits = strspn(bracket + 1, "0123456789");
      memmove(bracket, bracket + 1, digits);
      bracket[digits] = '\0';
    }
    Set(sp, "MASTER_ADDR", value);
  }
  uint32_t job_id = 0;
  spank_get_item(sp, S_JOB_ID, &job_id);
  snprintf(value, sizeof(value), "%u", 61000 + job_id % 4536);
  Set(sp, "MASTER_PORT", value);
  long ntasks = EnvLong(sp, "SLURM_NTASKS", 1);
  snprintf(value, sizeof(value), "%ld", ntasks);
  Set(sp, "WORLD_SIZE", value);
  if (EnvLong(sp, "SLURM_STEP_NUM_TASKS", 1) > EnvLong(sp, "SLURM_STEP_NUM_NODES", 1)) {
    Set(sp, "OMP_NUM_THREADS", "1");
  }
  return 0;
}

static int Fail(const char* what, const char* where) {
  slurm_error("pyxis-standin: %s %s: %s", what, where, strerror(errno));
  return -1;
}

static int Bind(const char* root, const char* src, const char* dst) {
  char target[8400];
  snprintf(target, sizeof(target), "%s%s", root, dst);
  struct stat st;
  if (stat(src, &st) != 0) return Fail("cannot mount", src);
  if (S_ISDIR(st.st_mode)) {
    char cmd[8500];
    snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", target);
    if (system(cmd) != 0) return Fail("cannot create", target);
  }
  if (mount(src, target, NULL, MS_BIND | MS_REC, NULL) != 0) return Fail("cannot bind-mount onto", target);
  return 0;
}

int slurm_spank_task_init_privileged(spank_t sp, int ac, char** av) {
  (void)sp, (void)ac, (void)av;
  if (image[0] == '\0') return 0;
  if (error[0] != '\0') {
    slurm_error("%s", error);
    return -1;
  }
  const char* root = "/mnt/pyxis-standin/root";
  char opts[8400];
  if (unshare(CLONE_NEWNS) != 0) return Fail("cannot unshare", "the mount namespace");
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) return Fail("cannot make private", "/");
  if (mount("tmpfs", "/mnt", "tmpfs", 0, "mode=0755") != 0) return Fail("cannot mount tmpfs on", "/mnt");
  if (system("mkdir -p /mnt/pyxis-standin/root /mnt/pyxis-standin/upper /mnt/pyxis-standin/work") != 0)
    return Fail("cannot create", "/mnt/pyxis-standin");
  snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=/mnt/pyxis-standin/upper,workdir=/mnt/pyxis-standin/work",
           image);
  if (mount("overlay", root, "overlay", 0, opts) != 0) return Fail("cannot mount the image", image);
  char target[8400];
  snprintf(target, sizeof(target), "%s/proc", root);
  if (mount("proc", target, "proc", 0, NULL) != 0) return Fail("cannot mount", target);
  if (Bind(root, "/sys", "/sys") != 0 || Bind(root, "/dev", "/dev") != 0 || Bind(root, "/tmp", "/tmp") != 0)
    return -1;
  snprintf(target, sizeof(target), "%s/run", root);
  if (mount("tmpfs", target, "tmpfs", 0, "mode=0755") != 0) return Fail("cannot mount tmpfs on", target);
  char list[8192];
  snprintf(list, sizeof(list), "%s", mounts);
  for (char *save = NULL, *entry = strtok_r(list, ",", &save); entry != NULL;
       entry = strtok_r(NULL, ",", &save)) {
    char* colon = strchr(entry, ':');
    const char* dst = colon ? colon + 1 : entry;
    if (colon) *colon = '\0';
    if (Bind(root, entry, dst) != 0) return -1;
  }
  if (chdir(root) != 0) return Fail("cannot enter", root);
  if (syscall(SYS_pivot_root, ".", ".") != 0) return Fail("cannot pivot_root to", root);
  if (umount2(".", MNT_DETACH) != 0) return Fail("cannot detach the old root of", root);
  if (chdir(workdir[0] ? workdir : "/") != 0) return Fail("cannot change directory to", workdir);
  return 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char** av) {
  (void)ac, (void)av;
  if (image[0] == '\0') return 0;
  char value[64];
  if (spank_getenv(sp, "SLURM_PROCID", value, sizeof(value)) == ESPANK_SUCCESS) Set(sp, "RANK", value);
  if (spank_getenv(sp, "SLURM_LOCALID", value, sizeof(value)) == ESPANK_SUCCESS) Set(sp, "LOCAL_RANK", value);
  return 0;
}
