-- pmgate usage ledger, schema version 3.
--
-- usage_budgets: one row per key slot, the counts its limits are enforced on
-- (docs/USAGE.md). Every admission locks the slot's row (SELECT … FOR UPDATE),
-- the domain's budget rule decides in Go, and the row is written back in the
-- same transaction: admissions of one slot on every replica are serialized and
-- exact. Slots never share a row.
--
-- usage_daily: the aggregated ledger, one row per UTC day, slot, API, model,
-- strategy and outcome; only counts (no content, no upstream id). Rows older
-- than the retention (USAGE_RETENTION_DAYS) are deleted by the sweep.
--
-- Version 2 binaries never touch these tables, so replicas can be rolled one
-- at a time.
CREATE TABLE usage_budgets (
    slot             text             PRIMARY KEY,
    day              date,
    day_dispatches   bigint           NOT NULL DEFAULT 0 CHECK (day_dispatches >= 0),
    month            date,            -- the first day of the month of month_dispatches
    month_dispatches bigint           NOT NULL DEFAULT 0 CHECK (month_dispatches >= 0),
    tokens           double precision NOT NULL DEFAULT 0,
    tokens_at        timestamptz
);

CREATE TABLE usage_daily (
    day                        date   NOT NULL,
    slot                       text   NOT NULL,
    api                        text   NOT NULL,
    model                      text   NOT NULL,
    strategy                   text   NOT NULL,
    outcome                    text   NOT NULL,
    requests                   bigint NOT NULL DEFAULT 0,
    dispatches                 bigint NOT NULL DEFAULT 0,
    query_chars                bigint NOT NULL DEFAULT 0,
    output_chars               bigint NOT NULL DEFAULT 0,
    reported_requests          bigint NOT NULL DEFAULT 0,
    reported_prompt_tokens     bigint NOT NULL DEFAULT 0,
    reported_completion_tokens bigint NOT NULL DEFAULT 0,
    estimated_input_tokens     bigint NOT NULL DEFAULT 0,
    estimated_output_tokens    bigint NOT NULL DEFAULT 0,
    duration_ms                bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (day, slot, api, model, strategy, outcome)
);
