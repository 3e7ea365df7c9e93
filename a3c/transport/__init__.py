"""How the workers that step envs reach the learner, behind one ``WorkerPool`` interface
(``pool``): child processes with bounded queues and shared-memory slots (``process_pool``,
``channel``, ``worker``, ``messages``) or Ray actors (``ray_pool``, ``ray_actor``,
``ray_cluster``); ``backends.make_pool`` picks one. No algorithm knowledge lives here."""
