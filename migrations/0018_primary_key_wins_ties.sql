-- An activity is looked up by its key, `(app_id, activity_id)`, on every write and read. With no
-- statistics yet (a new database: `activities` is empty or has never been analyzed), the planner
-- costs three indexes the same for such a lookup: the primary key, and `activities_app_newest`
-- and `activities_app_state`, which also lead with `app_id` and hold `activity_id` further on.
-- On a tie it takes the index it considered first, the newest, `activities_app_newest`, which
-- reads every entry of the app to find one activity. The write path's statements keep one
-- generic plan per connection, so a plan made while the table was small stayed until autovacuum
-- analyzed it: in the HTTP benchmark, openings cost PostgreSQL about 500 µs each instead of
-- 170, and 85 % of PostgreSQL's time went to scanning `activities_app_newest` (#20).
--
-- The primary key's index is built again, so that it is the newest of the table's indexes and
-- wins those ties; the constraint keeps its name. Building it locks `activities` against writes
-- while it runs (a second on a million activities on the development machine).
CREATE UNIQUE INDEX activities_pkey_rebuilt ON activities (app_id, activity_id);
ALTER TABLE activities
    DROP CONSTRAINT activities_pkey,
    ADD CONSTRAINT activities_pkey PRIMARY KEY USING INDEX activities_pkey_rebuilt;
