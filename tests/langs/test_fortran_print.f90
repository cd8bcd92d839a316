! test_fortran_print.f90 — `print` from every node at once loses no line
! (src/start/globals.ld: the Fortran runtime's own state, its units and
! their buffers, is each node's own). Every thread of a parallel region
! prints 200 numbered lines; then the master says how many threads ran.
! fortran_print_every_line.sh counts the lines.
program test_fortran_print
  use omp_lib
  implicit none
  integer :: i, me
!$omp parallel private(i, me)
  me = omp_get_thread_num()
  do i = 1, 200
    print '(a,i0,a,i0)', 'line from ', me, ' number ', i
  end do
!$omp end parallel
  print '(a,i0,a)', 'printed on ', omp_get_max_threads(), ' threads'
end program test_fortran_print
