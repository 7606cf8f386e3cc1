# Hardening flags for every target defined after this file (ELASTIC_HARDENING,
# default ON), as Debian's dpkg-buildflags gives them: _FORTIFY_SOURCE=2 where
# the compiler optimizes (it needs -O; Debug and the sanitizer tree have none),
# -fstack-protector-strong, full RELRO (-z relro -z now) and PIE executables.
# Not -z now for loadable modules (spank_elastic.so): their Slurm symbols come
# from the process that loads them (srun, sbatch, salloc, slurmstepd), and with
# BIND_NOW one that a process lacks would refuse the whole plugin there.
# tests/ship checks the built files (check_hardening.py).
if(NOT ELASTIC_HARDENING)
  return()
endif()
include(CheckPIESupported)
check_pie_supported(LANGUAGES CXX)  # with POSITION_INDEPENDENT_CODE: -pie for executables
add_compile_options(-fstack-protector-strong
                    "$<$<NOT:$<CONFIG:Debug>>:-U_FORTIFY_SOURCE;-D_FORTIFY_SOURCE=2>")
add_link_options(-Wl,-z,relro "$<$<NOT:$<STREQUAL:$<TARGET_PROPERTY:TYPE>,MODULE_LIBRARY>>:-Wl,-z,now>")
