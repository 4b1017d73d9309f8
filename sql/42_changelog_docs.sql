-- The examples of docs/changelog.md, as written there, and what the page
-- says of windows, sessions and privileges over changelog streams.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stream_ext;
RESET client_min_messages;
SET timezone = 'UTC';
SET datestyle = ISO;
CREATE ROLE cl_docs_user;
GRANT CREATE ON SCHEMA public TO cl_docs_user;
-- everything as an ordinary user: nothing here needs more
SET ROLE cl_docs_user;

SELECT stream_ext.create_stream('orders_cdc', 'id int, customer text, amount numeric',
                                changelog => true);
INSERT INTO orders_cdc (id, customer, amount) VALUES (1, 'ann', 10), (2, 'bob', 5);
-- order 1 changes its amount: retract the old row, add the new one
INSERT INTO orders_cdc (id, customer, amount, stream_ext_sign)
  VALUES (1, 'ann', 10, -1), (1, 'ann', 12, 1);
-- order 2 is deleted
INSERT INTO orders_cdc (id, customer, amount, stream_ext_sign) VALUES (2, 'bob', 5, -1);

CREATE VIEW revenue WITH (continuous) AS
  SELECT customer, count(*) AS orders, sum(amount) AS total, avg(amount) AS mean
    FROM orders_cdc GROUP BY customer;
SELECT * FROM revenue;

CREATE VIEW biggest WITH (continuous) AS
  SELECT customer, max(amount) FROM orders_cdc GROUP BY customer;

SELECT stream_ext.create_stream('visits_cdc', 'page text, ts timestamptz', changelog => true);
CREATE VIEW visits_5m WITH (continuous) AS
  SELECT stream_ext.tumble(ts, '5 minutes') AS w, page, count(*) AS visits
    FROM visits_cdc GROUP BY 1, 2;
INSERT INTO visits_cdc VALUES ('/a', '2026-01-01 10:01'), ('/a', '2026-01-01 10:02');
-- the second visit was really at 10:07: retract it, add it again
INSERT INTO visits_cdc (page, ts, stream_ext_sign)
  VALUES ('/a', '2026-01-01 10:02', -1), ('/a', '2026-01-01 10:07', 1);
SELECT w, page, visits FROM visits_5m ORDER BY w;

-- hopping windows: the retraction leaves every window the row was in
CREATE VIEW visits_hop WITH (continuous) AS
  SELECT window_start, count(*) AS visits
    FROM visits_cdc, stream_ext.hop(ts, '10 minutes', '5 minutes') AS w(window_start)
   GROUP BY window_start;
INSERT INTO visits_cdc VALUES ('/b', '2026-01-01 10:08');
SELECT window_start, visits FROM visits_hop ORDER BY 1;
INSERT INTO visits_cdc (page, ts, stream_ext_sign) VALUES ('/b', '2026-01-01 10:08', -1);
SELECT window_start, visits FROM visits_hop ORDER BY 1;

-- session windows are refused
CREATE VIEW visit_sessions WITH (continuous, session_gap = '30 minutes', time_column = 'ts') AS
  SELECT page, count(*) FROM visits_cdc GROUP BY page;

RESET ROLE;
DROP TABLE orders_cdc, visits_cdc CASCADE;
REVOKE CREATE ON SCHEMA public FROM cl_docs_user;
DROP ROLE cl_docs_user;
