#!/bin/sh
# Dovecot IMAPSieve: a message moved out of Junk (to any folder but Trash) is learned as ham
# for its user (imap_sieve's pipe: the message on stdin, the user as $1); one learned as spam
# before is moved from spam to ham (the daemon relearns). docs/serve.md has the set-up.
# NBTEXT_SPAMC_ARGS may name the daemon (-d HOST -p PORT, or -U SOCKET); spamc's defaults otherwise.
exec /usr/bin/spamc ${NBTEXT_SPAMC_ARGS} -u "$1" -L ham
