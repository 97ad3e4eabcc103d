"""Reading what the user named: files, standard input, folders walked, and the formats
(PDF, HTML, chat exports) turned into text that points home. Nothing here cuts or stores."""
