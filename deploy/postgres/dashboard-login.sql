-- Run once by the postgres image when it creates the database (docker-compose.yml): a login for
-- Grafana that holds only liveline_dashboard, the read-only role the migrations grant to.
DO $$
BEGIN
    CREATE ROLE liveline_dashboard NOLOGIN;
EXCEPTION WHEN duplicate_object THEN NULL;
END
$$;
CREATE ROLE grafana LOGIN PASSWORD 'grafana' IN ROLE liveline_dashboard;
