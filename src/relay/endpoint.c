/* ferry: helpers shared by every endpoint kind. */
#include "endpoint.h"

void
endpoint_clear_names (struct endpoint *ep)
{
  g_clear_pointer (&ep->name, g_free);
  g_clear_pointer (&ep->write_name, g_free);
}
