/*-------------------------------------------------------------------------
 *
 * time_input.c
 *	  Timestamps of Kafka messages without PostgreSQL's general date/time
 *	  parser, for the decoders (decode.c).
 *
 * timestamptz_in() accepts every date/time spelling PostgreSQL knows, and
 * pays for it: in a Kafka source, turning event times into timestamps took
 * as long as parsing the rest of the message.  Event times in real
 * pipelines come in two forms, both handled here directly:
 *
 *	- ISO 8601 with an explicit offset, as Kafka producers write them:
 *	  "2024-05-01T12:00:00.123Z", "2024-05-01 12:00:00+02", "...+05:30".
 *	  kafka_fast_timestamp() reads exactly that form (and, for timestamp
 *	  without time zone, the same without an offset) and builds the value
 *	  with tm2timestamp(), the function timestamptz_in() ends in; anything
 *	  else -- other spellings, no offset for timestamptz (the result would
 *	  depend on TimeZone), hour 24, leap seconds, more than six fractional
 *	  digits, years outside 1000..9999 -- returns false and the caller uses
 *	  the type's input function, so the result is always the one
 *	  timestamptz_in() would give.
 *	- Unix time as a number, with the source option epoch_unit (seconds,
 *	  milliseconds or microseconds): kafka_epoch_timestamp().
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "common/int.h"
#include "datatype/timestamp.h"
#include "utils/datetime.h"
#include "utils/timestamp.h"

#include "core/util.h"
#include "kafka/time_input.h"

/* n decimal digits at s as a number, or -1 */
static int
digits(const char *s, int n)
{
	int			v = 0;

	for (int i = 0; i < n; i++)
	{
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/*
 * s in the form YYYY-MM-DD[T ]HH:MM:SS[.f{1,6}] followed by Z, +HH, +HHMM
 * or +HH:MM (with_tz) or by nothing (!with_tz): *result and true; false
 * for anything else, including values PostgreSQL would refuse.
 */
bool
kafka_fast_timestamp(const char *s, bool with_tz, Timestamp *result)
{
	struct pg_tm tm = {0};
	fsec_t		fsec = 0;
	int			tz = 0;
	const char *p;

	tm.tm_year = digits(s, 4);
	if (tm.tm_year < 1000 || s[4] != '-')
		return false;
	tm.tm_mon = digits(s + 5, 2);
	if (tm.tm_mon < 1 || tm.tm_mon > MONTHS_PER_YEAR || s[7] != '-')
		return false;
	tm.tm_mday = digits(s + 8, 2);
	if (tm.tm_mday < 1 || tm.tm_mday > day_tab[isleap(tm.tm_year)][tm.tm_mon - 1])
		return false;
	if (s[10] != 'T' && s[10] != ' ')
		return false;
	tm.tm_hour = digits(s + 11, 2);
	if (tm.tm_hour < 0 || tm.tm_hour > 23 || s[13] != ':')
		return false;
	tm.tm_min = digits(s + 14, 2);
	if (tm.tm_min < 0 || tm.tm_min > 59 || s[16] != ':')
		return false;
	tm.tm_sec = digits(s + 17, 2);
	if (tm.tm_sec < 0 || tm.tm_sec > 59)
		return false;
	p = s + 19;
	if (*p == '.')
	{
		int			n = 0;
		int			scale = 100000;

		for (p++; *p >= '0' && *p <= '9'; p++, n++)
		{
			if (n == 6)
				return false;	/* rounding: left to timestamptz_in */
			fsec += (*p - '0') * scale;
			scale /= 10;
		}
		if (n == 0)
			return false;
	}
	if (with_tz)
	{
		if (*p == 'Z')
			p++;
		else if (*p == '+' || *p == '-')
		{
			int			sign = (*p == '+') ? 1 : -1;
			int			hh = digits(p + 1, 2);
			int			mm = 0;

			if (hh < 0 || hh > 15)
				return false;
			p += 3;
			if (*p == ':')
				p++;
			if (*p != '\0')
			{
				mm = digits(p, 2);
				if (mm < 0 || mm > 59)
					return false;
				p += 2;
			}
			/* PostgreSQL counts the offset west of Greenwich */
			tz = -sign * (hh * SECS_PER_HOUR + mm * SECS_PER_MINUTE);
		}
		else
			return false;
	}
	if (*p != '\0')
		return false;
	if (tm2timestamp(&tm, fsec, with_tz ? &tz : NULL, result) != 0 ||
		!IS_VALID_TIMESTAMP(*result))
		return false;
	return true;
}

/*
 * A JSON or CSV number (already checked to be one) as unit_usecs
 * microseconds since the Unix epoch; ereports when it is out of range.
 * Integers are exact; fractions round to the microsecond.
 */
Timestamp
kafka_epoch_timestamp(const char *number, int64 unit_usecs)
{
	int64		usecs;
	bool		ok;

	if (strpbrk(number, ".eE") == NULL)
	{
		char	   *end;
		int64		v;

		errno = 0;
		v = strtoi64(number, &end, 10);
		ok = errno == 0 && *end == '\0' &&
			!pg_mul_s64_overflow(v, unit_usecs, &usecs) &&
			!pg_add_s64_overflow(usecs, SE_UNIX_EPOCH_TIMESTAMP, &usecs);
	}
	else
	{
		double		d = strtod(number, NULL) * (double) unit_usecs;

		ok = isfinite(d) && fabs(d) < 9.2e18;
		if (ok)
			ok = !pg_add_s64_overflow((int64) rint(d), SE_UNIX_EPOCH_TIMESTAMP, &usecs);
	}
	if (!ok || !IS_VALID_TIMESTAMP(usecs))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("Unix time out of range: \"%s\"", number)));
	return (Timestamp) usecs;
}
