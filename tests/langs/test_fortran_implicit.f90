! test_fortran_implicit.f90 — the omp_* routines called as a Fortran 77
! program calls them, without omp_lib: implicit interfaces, so the
! compiler calls omp_get_wtime_ and the others with every argument by
! reference (src/omp/omp_fortran.c). Kept apart from omp_lib's users: one
! file may not see both interfaces of a name.
logical function implicit_interfaces_work(nt)
  implicit none
  integer, intent(in) :: nt
  double precision omp_get_wtime, t0, t1
  integer omp_get_num_procs, omp_get_max_threads, omp_get_thread_num
  integer omp_get_num_threads, omp_get_level
  logical omp_in_parallel
  integer*8 lock
  integer seen, level, counted
  logical inside
  external omp_get_wtime, omp_get_num_procs, omp_get_max_threads, omp_get_thread_num
  external omp_get_num_threads, omp_in_parallel, omp_get_level
  external omp_init_lock, omp_set_lock, omp_unset_lock, omp_destroy_lock
  external omp_set_num_threads
  ! places, the affinity format (strings: their lengths follow every
  ! other argument) and omp_control_tool, without omp_lib too
  integer omp_get_num_places, omp_get_place_num_procs, omp_control_tool
  integer*8 omp_get_affinity_format, omp_capture_affinity, n
  character(len=32) fmt
  character(len=64) line
  external omp_get_num_places, omp_get_place_num_procs, omp_control_tool
  external omp_set_affinity_format, omp_get_affinity_format, omp_capture_affinity

  implicit_interfaces_work = .true.
  t0 = omp_get_wtime()
  call omp_init_lock(lock)
  seen = 0
  counted = 0
  level = -1
  inside = .false.
!$omp parallel shared(seen, counted, level, inside, lock)
  call omp_set_lock(lock)
  counted = counted + 1
  call omp_unset_lock(lock)
  if (omp_get_thread_num() == 0) then
    seen = omp_get_num_threads()
    level = omp_get_level()
    inside = omp_in_parallel()
  end if
!$omp end parallel
  call omp_destroy_lock(lock)
  t1 = omp_get_wtime()
  if (omp_get_max_threads() /= nt) implicit_interfaces_work = .false.
  if (omp_get_num_procs() < nt) implicit_interfaces_work = .false.
  if (seen /= nt .or. counted /= nt) implicit_interfaces_work = .false.
  ! a team of one is not an active region (OpenMP: omp_in_parallel)
  if (level /= 1 .or. (inside .neqv. nt > 1)) implicit_interfaces_work = .false.
  if (omp_in_parallel()) implicit_interfaces_work = .false.
  if (t1 < t0) implicit_interfaces_work = .false.
  ! by reference: a value that is not 1 must reach the runtime as itself
  call omp_set_num_threads(1)
  if (omp_get_max_threads() /= 1) implicit_interfaces_work = .false.
  call omp_set_num_threads(nt)
  call omp_set_affinity_format('T%n of %N')
  n = omp_get_affinity_format(fmt)
  if (n /= 9 .or. fmt /= 'T%n of %N') implicit_interfaces_work = .false.
  n = omp_capture_affinity(line, 'thread %n of %N')
  if (n /= 13 .or. line /= 'thread 0 of 1') implicit_interfaces_work = .false.
  if (omp_get_num_places() < 1 .or. omp_get_place_num_procs(0) < 1) &
       implicit_interfaces_work = .false.
  ! no tool: omp_control_tool_notool
  if (omp_control_tool(1, 0) /= -2) implicit_interfaces_work = .false.
  if (.not. implicit_interfaces_work) print *, 'affinity: ', n, ' [', trim(fmt), '] [', trim(line), &
       '] places', omp_get_num_places()
  if (.not. implicit_interfaces_work) print *, 'implicit interfaces: threads', seen, counted, &
       level, inside, omp_get_max_threads(), nt
end function implicit_interfaces_work
