"""The board kinds: the one list of boards, with their period, label, rule and lifetime.

Everything that names a board kind (the writer, the ledger's derivation, the reads, the page's
tabs, the API's list of boards) takes it from `KINDS`.
"""

from dataclasses import dataclass
from datetime import date, datetime

from django.conf import settings

from seasons.periods import DAY, MONTH, WEEK, BadPeriod, Period

NO_PERIOD = "-"  # the period part of a season-long board's key


@dataclass(frozen=True)
class BoardKind:
    name: str
    label: str  # what a page calls it
    period: Period | None  # None: the board spans the season
    best: bool  # True: best single result (only ever raised); False: the sum of points
    ttl_setting: str | None  # the setting holding the key's lifetime after its last write

    @property
    def periodic(self) -> bool:
        return self.period is not None

    def ttl_s(self) -> int:
        """Seconds a board of this kind lives after its last write (0: no expiry)."""
        return int(getattr(settings, self.ttl_setting)) if self.ttl_setting else 0

    def ttl_left_s(self, last_write: datetime, now: datetime) -> int | None:
        """Seconds a board of this kind last written at `last_write` should still live (None: no
        expiry; 0 or less: gone)."""
        ttl = self.ttl_s()
        if ttl == 0:
            return None
        return int(ttl - (now - last_write).total_seconds())

    def period_of(self, moment: date | datetime) -> str:
        """The period label a result played at `moment` lands in (`-` for season boards)."""
        return self.period.label(moment) if self.period is not None else NO_PERIOD

    def period_sql(self, column: str) -> str:
        """SQL giving `period_of` a `date` column (PostgreSQL): what the ledger's queries group by."""
        return self.period.sql_label(column) if self.period is not None else f"'{NO_PERIOD}'"

    def period_checked(self, label: str) -> str:
        """`label` when it is a well-formed period of this kind; BadPeriod otherwise."""
        if self.period is None:
            raise BadPeriod(f"the {self.name} board has no period")
        return self.period.check(label)


ALL = BoardKind("all", "Season", None, best=False, ttl_setting=None)
DAILY = BoardKind("daily", "Today", DAY, best=False, ttl_setting="BOARD_DAY_TTL_S")
WEEKLY = BoardKind("weekly", "This week", WEEK, best=False, ttl_setting="BOARD_WEEK_TTL_S")
MONTHLY = BoardKind("monthly", "This month", MONTH, best=False, ttl_setting="BOARD_MONTH_TTL_S")
BEST = BoardKind("best", "Best match", None, best=True, ttl_setting=None)

KINDS: dict[str, BoardKind] = {kind.name: kind for kind in (ALL, DAILY, WEEKLY, MONTHLY, BEST)}
BOARD_NAMES: tuple[str, ...] = tuple(KINDS)
