/* Process-wide state owned by ge_initialize, and what sessions need of it. */
#ifndef GE_RUNTIME_SESSION_H
#define GE_RUNTIME_SESSION_H

#include "runtime/options.h"

/* Registers a live session; GE_ERR_STATE when the process is not initialized.  *defaults
   receives the process options. */
ge_status ge_process_attach(ge_session *s, ge_options *defaults);
void ge_process_detach(ge_session *s);
/* Whether ge_initialize was called (and ge_finalize not since). */
bool ge_process_initialized(void);
/* Called by ge_finalize for each live session: drain pending work, refuse later calls. */
void ge_session_shutdown(ge_session *s);

#endif
