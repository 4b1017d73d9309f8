-- stream_ext install script, core part: catalog, streams, continuous views.
\echo Use "CREATE EXTENSION stream_ext" to load this file. \quit
