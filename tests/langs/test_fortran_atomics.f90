! Every node adds into shared counters with !$omp atomic (integer and
! real, update and capture): dsmfort compiles them through LLVM's
! instrumentation, so each sum is exact across nodes.
program fortran_atomics
  use omp_lib
  implicit none
  integer :: n, i, threads, mine, taken
  real(8) :: x
  integer :: seen(4096)
  common /counts/ n, x, taken, seen
  n = 0
  x = 0
  taken = 0
  seen = 0
  threads = 1
!$omp parallel private(i, mine)
!$omp single
  threads = omp_get_num_threads()
!$omp end single
  do i = 1, 2000
!$omp atomic
    n = n + 1
!$omp atomic
    x = x + 0.5d0
!$omp atomic capture
    mine = taken
    taken = taken + 1
!$omp end atomic
    if (mine < 4096) seen(mine + 1) = 1
  end do
!$omp end parallel
  print '(a,i0,a,f0.1,a,i0,a,i0)', 'n ', n, ' x ', x, ' taken ', taken, ' unique ', sum(seen)
  if (n == 2000 * threads .and. x == 1000d0 * threads .and. taken == 2000 * threads .and. &
      sum(seen) == min(2000 * threads, 4096)) then
    print '(a,i0,a)', 'fortran atomics: ok on ', threads, ' threads'
  else
    print '(a,i0,a)', 'fortran atomics: WRONG on ', threads, ' threads'
    stop 1
  end if
end program
