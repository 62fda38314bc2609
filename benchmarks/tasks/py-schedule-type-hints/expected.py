"""Weekly shift schedules for the staffing tool."""

import datetime as dt
import re
from collections import defaultdict
from typing import Any, Iterable, Iterator, Optional

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
TIME_RE = re.compile(r"^(?P<h>[01]\d|2[0-3]):(?P<m>[0-5]\d)$")
MAX_SHIFT_HOURS = 12
MAX_WEEKLY_HOURS = 48


class ValidationError(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def parse_time(value: str) -> dt.time:
    match = TIME_RE.match(value.strip())
    if not match:
        raise ValidationError("time", f"expected HH:MM, got {value!r}")
    return dt.time(int(match["h"]), int(match["m"]))


def iter_week(week_start: dt.date) -> Iterator[tuple[str, dt.date]]:
    for offset, day in enumerate(WEEKDAYS):
        yield day, week_start + dt.timedelta(days=offset)


class Shift:
    __slots__ = ("employee", "day", "start", "end", "role")

    def __init__(
        self,
        employee: str,
        day: str,
        start: "str | dt.time",
        end: "str | dt.time",
        role: str = "staff",
    ) -> None:
        if day not in WEEKDAYS:
            raise ValidationError("day", f"unknown weekday {day!r}")
        self.employee = employee
        self.day = day
        self.start = parse_time(start) if isinstance(start, str) else start
        self.end = parse_time(end) if isinstance(end, str) else end
        self.role = role
        if self.hours <= 0:
            raise ValidationError("end", "shift must end after it starts")
        if self.hours > MAX_SHIFT_HOURS:
            raise ValidationError("end", f"shift longer than {MAX_SHIFT_HOURS}h")

    @property
    def hours(self) -> float:
        start = self.start.hour * 60 + self.start.minute
        end = self.end.hour * 60 + self.end.minute
        return (end - start) / 60

    def overlaps(self, other: "Shift") -> bool:
        return (
            self.day == other.day
            and self.start < other.end
            and other.start < self.end
        )

    def __repr__(self) -> str:
        return (
            f"Shift({self.employee!r}, {self.day!r}, "
            f"{self.start:%H:%M}-{self.end:%H:%M}, role={self.role!r})"
        )


class Schedule:
    def __init__(self, week_start: dt.date, shifts: Optional[Iterable[Shift]] = None) -> None:
        if week_start.weekday() != 0:
            raise ValidationError("week_start", "schedules must start on a Monday")
        self.week_start = week_start
        self._shifts: list[Shift] = []
        for shift in shifts or ():
            self.add(shift)

    def add(self, shift: Shift) -> None:
        for existing in self._shifts:
            if existing.employee == shift.employee and existing.overlaps(shift):
                raise ValidationError(
                    "shift", f"{shift.employee} already works {existing!r}"
                )
        if self.hours_for(shift.employee) + shift.hours > MAX_WEEKLY_HOURS:
            raise ValidationError(
                "shift", f"{shift.employee} would exceed {MAX_WEEKLY_HOURS}h this week"
            )
        self._shifts.append(shift)

    def remove(self, employee: str, day: str) -> int:
        before = len(self._shifts)
        self._shifts = [
            s for s in self._shifts if not (s.employee == employee and s.day == day)
        ]
        return before - len(self._shifts)

    def find(self, employee: str, day: str) -> Optional[Shift]:
        for s in self._shifts:
            if s.employee == employee and s.day == day:
                return s
        return None

    def hours_for(self, employee: str) -> float:
        return sum(s.hours for s in self._shifts if s.employee == employee)

    def on_day(self, day: str) -> list[Shift]:
        return sorted((s for s in self._shifts if s.day == day), key=lambda s: s.start)

    def date_of(self, day: str) -> dt.date:
        return self.week_start + dt.timedelta(days=WEEKDAYS.index(day))

    def coverage(self, role: Optional[str] = None) -> dict[str, float]:
        result: defaultdict[str, float] = defaultdict(float)
        for s in self._shifts:
            if role is None or s.role == role:
                result[s.day] += s.hours
        return dict(result)

    def employees(self) -> list[str]:
        return sorted({s.employee for s in self._shifts})

    def __iter__(self) -> Iterator[Shift]:
        return iter(sorted(self._shifts, key=lambda s: (WEEKDAYS.index(s.day), s.start)))

    def __len__(self) -> int:
        return len(self._shifts)


def total_hours(shifts: Iterable[Shift]) -> float:
    return sum(s.hours for s in shifts)


def load_schedule(data: dict[str, Any]) -> Schedule:
    week_start = dt.date.fromisoformat(data["week_start"])
    shifts = [
        Shift(
            employee=row["employee"],
            day=row["day"],
            start=row["start"],
            end=row["end"],
            role=row.get("role", "staff"),
        )
        for row in data.get("shifts", [])
    ]
    return Schedule(week_start, shifts)


def dump_schedule(schedule: Schedule) -> dict[str, Any]:
    return {
        "week_start": schedule.week_start.isoformat(),
        "shifts": [
            {
                "employee": s.employee,
                "day": s.day,
                "start": s.start.strftime("%H:%M"),
                "end": s.end.strftime("%H:%M"),
                "role": s.role,
            }
            for s in schedule
        ],
    }
