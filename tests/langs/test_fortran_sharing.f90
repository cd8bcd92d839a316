! test_fortran_sharing.f90 — what a Fortran OpenMP program built with dsmfort
! shares across nodes (docs/unmodified-programs.md): a common block, module
! variables (a scalar, a fixed array, an allocatable), SAVEd locals, an
! allocatable of the main program, an automatic array of a subroutine the
! master calls; and what it keeps per node: threadprivate variables, with
! copyin. Each shared one is written by every thread of a parallel region
! (each its own part), then checked on the master. The omp_* routines are
! reached through omp_lib (bind(c)) here, and with implicit interfaces
! (the `_` entry points, by reference, as NPB calls omp_get_wtime) in
! test_fortran_implicit.f90. Exits non-zero with a line naming what failed.
module shared_data
  implicit none
  integer, parameter :: n = 20000
  integer :: mod_scalar = 0
  double precision :: mod_fixed(n)
  double precision, allocatable :: mod_alloc(:)
end module shared_data

subroutine with_automatic(m, nthreads_seen, total)
  use omp_lib, only: omp_get_num_threads
  implicit none
  integer, intent(in) :: m
  integer, intent(out) :: nthreads_seen
  double precision, intent(out) :: total
  double precision :: work(m)       ! automatic: on the master's (shared) stack
  integer :: i
!$omp parallel do
  do i = 1, m
    work(i) = 3 * i
  end do
!$omp end parallel do
  nthreads_seen = 0
!$omp parallel
!$omp master
  nthreads_seen = omp_get_num_threads()
!$omp end master
!$omp end parallel
  total = sum(work)
end subroutine with_automatic

! threadprivate and copyin (flang calls __kmpc_threadprivate_cached): one
! copy per node, copyin's value from the master, kept between regions.
logical function threadprivate_works()
  use omp_lib, only: omp_get_thread_num
  implicit none
  integer, save :: x
  integer :: y, bad
  common /tpc/ y
!$omp threadprivate(x, /tpc/)
  x = 7
  y = 9
  bad = 0
!$omp parallel copyin(x, /tpc/) reduction(+:bad)
  if (x /= 7 .or. y /= 9) bad = bad + 1
  x = omp_get_thread_num()
  y = 100 + x
!$omp end parallel
!$omp parallel reduction(+:bad)
  if (x /= omp_get_thread_num() .or. y /= 100 + x) bad = bad + 1
!$omp end parallel
  threadprivate_works = bad == 0
end function threadprivate_works

subroutine count_calls(total)
  implicit none
  integer, intent(out) :: total
  integer, save :: calls = 0
  calls = calls + 1
  total = calls
end subroutine count_calls

program test_fortran_sharing
  use shared_data
  use omp_lib, only: omp_get_max_threads, omp_get_thread_num
  implicit none
  integer :: cb(n)
  double precision :: cbsum
  common /blk/ cb, cbsum
  double precision, allocatable :: a(:)
  double precision :: total
  integer :: i, nt, seen, calls, who(0:63), fails
  logical, external :: implicit_interfaces_work, threadprivate_works
  double precision :: expect

  fails = 0
  nt = omp_get_max_threads()
  allocate(a(n), mod_alloc(n))
  who = -1
!$omp parallel do
  do i = 1, n
    a(i) = i
    cb(i) = 2 * i
    mod_fixed(i) = 4 * i
    mod_alloc(i) = 5 * i
  end do
!$omp end parallel do
!$omp parallel
  who(omp_get_thread_num()) = omp_get_thread_num()
!$omp master
  mod_scalar = 42
!$omp end master
!$omp end parallel
!$omp parallel reduction(+:cbsum)
!$omp do
  do i = 1, n
    cbsum = cbsum + cb(i)
  end do
!$omp end do
!$omp end parallel
  expect = dble(n) * dble(n + 1) / 2
  if (sum(a) /= expect) call fail('an allocatable array of the main program')
  if (sum(dble(cb)) /= 2 * expect .or. cbsum /= 2 * expect) call fail('a common block')
  if (sum(mod_fixed) /= 4 * expect) call fail('a module array')
  if (sum(mod_alloc) /= 5 * expect) call fail('an allocatable module array')
  if (mod_scalar /= 42) call fail('a module scalar')
  do i = 0, nt - 1
    if (who(i) /= i) call fail('a local array of the main program')
  end do
  call with_automatic(n, seen, total)
  if (total /= 3 * expect) call fail('an automatic array')
  if (seen /= nt) call fail('omp_get_num_threads')
!$omp parallel
!$omp critical
  call count_calls(calls)
!$omp end critical
!$omp end parallel
  call count_calls(calls)
  if (calls /= nt + 1) call fail('a SAVEd local')
  if (.not. implicit_interfaces_work(nt)) call fail('the omp_* routines called without omp_lib')
  if (.not. threadprivate_works()) call fail('threadprivate variables (private, with copyin)')
  if (fails /= 0) stop 1
  print '(a,i0,a)', 'fortran sharing: ok on ', nt, ' threads'
contains
  subroutine fail(what)
    character(*), intent(in) :: what
    print '(a,a)', 'not shared: ', what
    fails = fails + 1
  end subroutine fail
end program test_fortran_sharing
