-- The probe of #40: the partitions ahead are created one table per transaction, by
-- `liveline_create_partitions(parent)` (migrations/functions/), so that each change to a table's
-- partitions is short and makes the sessions plan again only the statements on that table. The
-- function that created every table's partitions in one transaction goes. (On a database being
-- created, the function definitions come after the migrations: it does not exist yet.)
DROP FUNCTION IF EXISTS liveline_create_partitions();
