"""The numbers of what a correct fp32 kernel's arithmetic is assumed to do (golden/bound.py says
why each): the unit roundoff, exp's relative error, the flush threshold, the lanes of a sum, and
the slack of the float64 golden's own rounding. golden/bound.py derives the error bound from them
and golden/fused_library.py hands them to golden/fused.c."""

U32 = 2.0**-24  # fp32 unit roundoff
EXP_REL_ERR = 2.0**-21
FLUSH = 2.0**-126  # smallest fp32 normal: results below may be flushed to zero
SMALLEST_SUBNORMAL_HALF = 2.0**-150
LANES = 64
SLACK64 = 2.0**-50  # relative slack for the float64 golden's own rounding
